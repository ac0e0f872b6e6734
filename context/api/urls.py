from django.urls import path

from context.api import views

urlpatterns = [
    path("context/", views.ContextApi.as_view(), name="context"),
]
