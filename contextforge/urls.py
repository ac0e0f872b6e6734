from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from contextforge import metrics, views

api_v1: list[URLPattern | URLResolver] = [
    path("", include("knowledge.api.urls")),
    path("", include("gitsync.api.urls")),
    path("", include("tasks.api.urls")),
    path("", include("accounts.api.urls")),
    path("", include("webhooks.api.urls")),
    path("", include("context.api.urls")),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api:schema"), name="docs"),
]

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="dashboard:overview", permanent=False)),
    path("healthz", views.healthz, name="healthz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.auth_urls")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("i18n/", include("django.conf.urls.i18n")),
    path("api/v1/", include((api_v1, "api"))),
    path("dashboard/", include("knowledge.urls")),
    path("dashboard/keys/", include("accounts.urls")),
    path("dashboard/projects/<slug:slug>/webhooks/", include("webhooks.urls")),
    path("dashboard/projects/", include("accounts.project_urls")),
    path("dashboard/repositories/", include("gitsync.urls")),
    path("dashboard/tasks/", include("tasks.urls")),
]

handler400 = "contextforge.api.handler400"
handler403 = "accounts.views.permission_denied"
handler404 = "contextforge.api.handler404"
handler500 = "contextforge.middleware.server_error"
