from django.urls import path

from webhooks.api import views

urlpatterns = [
    path("webhooks/", views.WebhookListCreateApi.as_view(), name="webhooks"),
    path("webhooks/<int:pk>/", views.WebhookDetailApi.as_view(), name="webhook"),
    path("webhooks/<int:pk>/rotate-secret/", views.WebhookRotateSecretApi.as_view(), name="webhook-rotate"),
    path("webhooks/<int:pk>/ping/", views.WebhookPingApi.as_view(), name="webhook-ping"),
    path("webhooks/<int:pk>/deliveries/", views.DeliveryListApi.as_view(), name="webhook-deliveries"),
    path(
        "webhooks/<int:pk>/deliveries/<int:delivery_pk>/resend/",
        views.DeliveryResendApi.as_view(),
        name="webhook-delivery-resend",
    ),
]
