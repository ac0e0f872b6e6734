from django.urls import path

from gitsync.api import views

urlpatterns = [
    path("repositories/", views.RepositoryListCreateApi.as_view(), name="repositories"),
    path("repositories/<int:pk>/", views.RepositoryDetailApi.as_view(), name="repository"),
    path("repositories/<int:pk>/sync/", views.RepositorySyncApi.as_view(), name="repository-sync"),
    path(
        "repositories/<int:pk>/knowledge-sources/",
        views.KnowledgeSourceListCreateApi.as_view(),
        name="knowledge-sources",
    ),
    path(
        "repositories/<int:pk>/knowledge-sources/<int:source_pk>/",
        views.KnowledgeSourceDetailApi.as_view(),
        name="knowledge-source",
    ),
    path("repositories/<int:pk>/webhook/", views.RepositoryWebhookApi.as_view(), name="repository-webhook"),
]
