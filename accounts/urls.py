from django.urls import path

from accounts import views

app_name = "keys"

urlpatterns = [
    path("", views.key_list, name="list"),
    path("<int:pk>/revoke/", views.key_revoke, name="revoke"),
]
