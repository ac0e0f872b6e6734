from django.urls import path

from gitsync import views

app_name = "gitsync"

urlpatterns = [
    path("", views.repository_list, name="repositories"),
    path("<int:pk>/", views.repository_detail, name="repository"),
    path("<int:pk>/sync/", views.repository_sync, name="sync"),
    path("projects/<slug:slug>/", views.project_repositories, name="project-repositories"),
]
