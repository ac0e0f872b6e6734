from django.urls import path

from accounts import views

app_name = "projects"

urlpatterns = [
    path("", views.project_list, name="list"),
    path("new/", views.project_create, name="create"),
    path("switch/", views.project_switch, name="switch"),
    path("join/<str:token>/", views.invitation_accept, name="join"),
    path("invitations/<int:pk>/accept/", views.my_invitation_accept, name="my-invitation-accept"),
    path("invitations/<int:pk>/decline/", views.my_invitation_decline, name="my-invitation-decline"),
    path("<slug:slug>/", views.project_settings, name="settings"),
    path("<slug:slug>/members/", views.project_members, name="members"),
    path("<slug:slug>/members/add/", views.member_add, name="member-add"),
    path("<slug:slug>/members/<str:username>/role/", views.member_role, name="member-role"),
    path("<slug:slug>/members/<str:username>/remove/", views.member_remove, name="member-remove"),
    path("<slug:slug>/invitations/", views.invitation_create, name="invitation-create"),
    path("<slug:slug>/invitations/<int:pk>/revoke/", views.invitation_revoke, name="invitation-revoke"),
]
