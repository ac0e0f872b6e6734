from django.urls import path

from knowledge.api import views

urlpatterns = [
    path("items/", views.ItemListCreateApi.as_view(), name="items"),
    path("items/import/", views.ItemImportApi.as_view(), name="items-import"),
    path("items/export/", views.ItemExportApi.as_view(), name="items-export"),
    path("items/<int:pk>/", views.ItemDetailApi.as_view(), name="item"),
    path("imports/", views.ImportCreateApi.as_view(), name="imports"),
    path("imports/<int:pk>/", views.ImportDetailApi.as_view(), name="import"),
    path("search/", views.SearchApi.as_view(), name="search"),
]
