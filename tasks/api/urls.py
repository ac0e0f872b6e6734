from django.urls import path

from tasks.api import views

urlpatterns = [
    path("tasks/", views.TaskListCreateApi.as_view(), name="tasks"),
    path("tasks/next/", views.TaskNextApi.as_view(), name="tasks-next"),
    path("tasks/<int:pk>/", views.TaskDetailApi.as_view(), name="task"),
    path("tasks/<int:pk>/comments/", views.TaskCommentsApi.as_view(), name="task-comments"),
    path("tasks/<int:pk>/back-to-memory/", views.TaskBackToMemoryApi.as_view(), name="task-back-to-memory"),
    path("recent/", views.RecentApi.as_view(), name="recent"),
    path("items/<int:pk>/to-task/", views.ItemToTaskApi.as_view(), name="item-to-task"),
]
