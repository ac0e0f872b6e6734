from django.urls import path

from knowledge import views

app_name = "dashboard"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("items/", views.item_list, name="items"),
    path("items/new/", views.item_create, name="item-create"),
    path("items/move/", views.items_move, name="items-move"),
    path("items/<int:pk>/", views.item_detail, name="item"),
    path("items/<int:pk>/edit/", views.item_edit, name="item-edit"),
    path("items/<int:pk>/delete/", views.item_delete, name="item-delete"),
    path("items/<int:pk>/confirm/", views.item_confirm, name="item-confirm"),
    path("review/", views.review, name="review"),
    path("review/approve/", views.review_approve, name="review-approve"),
    path("review/trash/", views.review_trash, name="review-trash"),
    path("review/pairs/<int:pk>/", views.review_pair, name="review-pair"),
    path("review/digest/", views.review_digest, name="review-digest"),
    path("items/<int:pk>/relations/", views.item_relate, name="item-relate"),
    path("items/<int:pk>/relations/<int:relation>/delete/", views.item_unrelate, name="item-unrelate"),
    path("items/<int:pk>/supersede/", views.item_supersede, name="item-supersede"),
    path(
        "items/<int:pk>/history/<int:version>/restore/",
        views.item_version_restore,
        name="item-version-restore",
    ),
    path("trash/", views.trash, name="trash"),
    path("trash/<int:pk>/restore/", views.trash_restore, name="trash-restore"),
    path("trash/<int:pk>/purge/", views.trash_purge, name="trash-purge"),
    path("activity/", views.activity, name="activity"),
    path("snapshots/", views.snapshots, name="snapshots"),
    path("snapshots/<int:pk>/restore/", views.snapshot_restore, name="snapshot-restore"),
    path("import/", views.import_page, name="import"),
    path("import/<int:pk>/", views.import_job, name="import-job"),
    path("import/<int:pk>/confirm/", views.import_confirm, name="import-confirm"),
    path("import/<int:pk>/resume/", views.import_resume, name="import-resume"),
    path("export/", views.export_page, name="export"),
    path("search/", views.search_page, name="search"),
    path("help/ranking", views.help_ranking, name="help-ranking"),
    path("help/agents", views.help_agents, name="help-agents"),
]
