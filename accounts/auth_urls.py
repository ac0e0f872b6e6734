"""Sign-in pages that differ from django.contrib.auth's, included before its URLs (same names), and
single sign-on's two (the names mozilla-django-oidc reverses)."""

from django.urls import path

from accounts.views import SignInView, ThrottledPasswordResetView, oidc_callback, oidc_start

urlpatterns = [
    path("login/", SignInView.as_view(), name="login"),
    path("password_reset/", ThrottledPasswordResetView.as_view(), name="password_reset"),
    path("oidc/authenticate/", oidc_start, name="oidc_authentication_init"),
    path("oidc/callback/", oidc_callback, name="oidc_authentication_callback"),
]
