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
    path("search/", views.search_page, name="search"),
    path("help/ranking", views.help_ranking, name="help-ranking"),
    path("help/agents", views.help_agents, name="help-agents"),
]
