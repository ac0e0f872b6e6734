from django.urls import path

from knowledge import views

app_name = "dashboard"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("items/", views.item_list, name="items"),
    path("items/new/", views.item_create, name="item-create"),
    path("items/<int:pk>/", views.item_detail, name="item"),
    path("items/<int:pk>/edit/", views.item_edit, name="item-edit"),
    path("items/<int:pk>/delete/", views.item_delete, name="item-delete"),
    path("import/", views.import_page, name="import"),
    path("import/<int:pk>/", views.import_job, name="import-job"),
    path("import/<int:pk>/confirm/", views.import_confirm, name="import-confirm"),
    path("export/", views.export_page, name="export"),
    path("search/", views.search_page, name="search"),
    path("help/ranking", views.help_ranking, name="help-ranking"),
]
