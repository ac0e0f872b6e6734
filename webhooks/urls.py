from django.urls import path

from webhooks import views

app_name = "webhooks"

urlpatterns = [
    path("", views.webhook_list, name="list"),
    path("<int:pk>/", views.webhook_detail, name="detail"),
    path("<int:pk>/rotate/", views.webhook_rotate, name="rotate"),
    path("<int:pk>/ping/", views.webhook_ping, name="ping"),
    path("<int:pk>/delete/", views.webhook_delete, name="delete"),
    path("<int:pk>/deliveries/<int:delivery_pk>/resend/", views.delivery_resend, name="resend"),
]
