from django.urls import path

from gitsync import views

app_name = "gitsync"

urlpatterns = [
    path("", views.repository_list, name="repositories"),
    path("<int:pk>/", views.repository_detail, name="repository"),
    path("<int:pk>/sync/", views.repository_sync, name="sync"),
    path("<int:pk>/sources/", views.knowledge_source_add, name="source-add"),
    path("<int:pk>/sources/<int:source_pk>/remove/", views.knowledge_source_remove, name="source-remove"),
    path("projects/<slug:slug>/", views.project_repositories, name="project-repositories"),
]
