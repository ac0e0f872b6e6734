from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "knowledge"

    def ready(self) -> None:
        from threadpoolctl import threadpool_limits

        # BLAS runs each search's product on the calling thread: a web worker's concurrent requests, the
        # embedding's threads and the other processes already hold the cores, and BLAS's own threads
        # would only wait for them, far longer than the product takes.
        threadpool_limits(1, user_api="blas")
        from contextforge.metrics import REGISTRY
        from knowledge import receivers  # noqa: F401  (connects them)
        from knowledge.metrics import StateCollector

        REGISTRY.register(StateCollector())
