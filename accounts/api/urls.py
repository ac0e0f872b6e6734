from django.urls import path

from accounts.api import views

urlpatterns = [
    path("invitations/", views.MyInvitationListApi.as_view(), name="invitations"),
    path("invitations/<int:pk>/", views.MyInvitationDeclineApi.as_view(), name="invitation"),
    path("invitations/<int:pk>/accept/", views.MyInvitationAcceptApi.as_view(), name="invitation-accept"),
    path("projects/", views.ProjectListCreateApi.as_view(), name="projects"),
    path("projects/<slug:slug>/", views.ProjectDetailApi.as_view(), name="project"),
    path("projects/<slug:slug>/members/", views.MemberListCreateApi.as_view(), name="project-members"),
    path(
        "projects/<slug:slug>/members/<str:username>/",
        views.MemberDetailApi.as_view(),
        name="project-member",
    ),
    path(
        "projects/<slug:slug>/invitations/", views.InvitationCreateApi.as_view(), name="project-invitations"
    ),
]
