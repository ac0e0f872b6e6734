"""Sign-in pages that differ from django.contrib.auth's, included before its URLs (same names)."""

from django.urls import path

from accounts.views import ThrottledPasswordResetView

urlpatterns = [
    path("password_reset/", ThrottledPasswordResetView.as_view(), name="password_reset"),
]
