from django.urls import path

from knowledge.api import views

urlpatterns = [
    path("items/", views.ItemListCreateApi.as_view(), name="items"),
    path("items/import/", views.ItemImportApi.as_view(), name="items-import"),
    path("items/export/", views.ItemExportApi.as_view(), name="items-export"),
    path("items/<int:pk>/", views.ItemDetailApi.as_view(), name="item"),
    path("items/<int:pk>/history/", views.ItemHistoryApi.as_view(), name="item-history"),
    path("items/<int:pk>/relations/", views.ItemRelationsApi.as_view(), name="item-relations"),
    path(
        "items/<int:pk>/relations/history/",
        views.ItemRelationHistoryApi.as_view(),
        name="item-relations-history",
    ),
    path(
        "items/<int:pk>/relations/<int:relation>/",
        views.ItemRelationApi.as_view(),
        name="item-relation",
    ),
    path(
        "items/<int:pk>/history/<int:version>/restore/",
        views.ItemVersionRestoreApi.as_view(),
        name="item-version-restore",
    ),
    path("trash/", views.TrashListApi.as_view(), name="trash"),
    path("trash/<int:pk>/", views.TrashPurgeApi.as_view(), name="trash-item"),
    path("trash/<int:pk>/restore/", views.TrashRestoreApi.as_view(), name="trash-restore"),
    path("snapshots/", views.SnapshotListCreateApi.as_view(), name="snapshots"),
    path("snapshots/<int:pk>/restore/", views.SnapshotRestoreApi.as_view(), name="snapshot-restore"),
    path("imports/", views.ImportCreateApi.as_view(), name="imports"),
    path("imports/<int:pk>/", views.ImportDetailApi.as_view(), name="import"),
    path("imports/<int:pk>/confirm/", views.ImportConfirmApi.as_view(), name="import-confirm"),
    path("imports/<int:pk>/resume/", views.ImportResumeApi.as_view(), name="import-resume"),
    path("search/", views.SearchApi.as_view(), name="search"),
    path("items/<int:pk>/confirm/", views.ItemConfirmApi.as_view(), name="item-confirm"),
    path("items/<int:pk>/supersede/", views.ItemSupersedeApi.as_view(), name="item-supersede"),
    path("review/", views.ReviewQueueApi.as_view(), name="review"),
    path("review/items/approve/", views.ItemsApproveApi.as_view(), name="review-approve"),
    path("review/items/trash/", views.ItemsTrashApi.as_view(), name="review-trash"),
    path("review/items/<int:pk>/approve/", views.ItemApproveApi.as_view(), name="review-approve-one"),
    path("review/pairs/<int:pk>/", views.PairResolveApi.as_view(), name="review-pair"),
]
