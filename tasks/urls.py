from django.urls import path

from tasks import views

app_name = "tasks"

urlpatterns = [
    path("", views.board, name="board"),
    path("new/", views.task_new, name="new"),
    path("create/", views.task_create, name="create"),
    path("wishes/", views.wishes, name="wishes"),
    path("wishes/move/", views.wishes_move, name="wishes-move"),
    path("from-item/<int:pk>/", views.item_to_task, name="from-item"),
    path("of-item/<int:pk>/", views.task_of_item, name="of-item"),
    path("<int:pk>/", views.task_detail, name="task"),
    path("<int:pk>/edit/", views.task_edit, name="edit"),
    path("<int:pk>/move/", views.task_move, name="move"),
    path("<int:pk>/comment/", views.task_comment, name="comment"),
    path("<int:pk>/delete/", views.task_delete, name="delete"),
    path("<int:pk>/back-to-memory/", views.task_back_to_memory, name="back-to-memory"),
]
