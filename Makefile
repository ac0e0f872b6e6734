# ContextForge: `make run` starts everything, `make test` runs every test. Nothing else is needed.
PYTHON ?= python3.11
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# Where `make run` serves: `PORT=8400 make run`, or a whole address, `BIND=0.0.0.0:8400 make run`.
PORT   ?= 8000
BIND   ?= 127.0.0.1:$(PORT)

.PHONY: run test bench install system-deps lint clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# torch first: the CPU build that lies on this machine; anything else would pull gigabytes.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py ensure_admin --url http://$(BIND)/
	$(PY) manage.py serve --bind $(BIND)

# The test suite needs a browser (Debian's chromium), git and gettext (the i18n catalog check runs
# makemessages); as root it installs what is missing.
system-deps:
	@command -v chromium >/dev/null && command -v git >/dev/null && command -v msgmerge >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium git gettext >/dev/null; \
	  else echo "Install Debian's chromium, git and gettext (sudo apt-get install chromium git gettext)"; exit 1; fi; }

test: install system-deps
	$(PY) -m pytest $(PYTEST_ARGS)

bench: install
	$(PY) -m bench $(BENCH_ARGS)

# Style, the dependency rules of ARCHITECTURE.md (import contracts in pyproject.toml), and types (mypy's
# levels are in pyproject.toml too).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) var
