FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml ./
# The CPU build of torch first, so that sentence-transformers does not pull a CUDA build.
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY . .
RUN pip install --no-cache-dir . && DATABASE_URL=postgres://x@localhost/x DJANGO_SECRET_KEY=build-only-key-build-only-key-0000 \
    CONTEXTFORGE_DATA_DIR=/tmp/build python manage.py collectstatic --noinput
EXPOSE 8000
# The web server: the dashboard, the REST API and MCP (/mcp) on one port. docker-compose.yml runs the
# Celery workers (one per queue) and beat from the same image with their own commands.
CMD ["gunicorn", "contextforge.asgi:application", "--worker-class", "uvicorn_worker.UvicornWorker", "--bind", "0.0.0.0:8000", "--workers", "2", "--timeout", "120", "--access-logfile", "-", "--no-control-socket"]
