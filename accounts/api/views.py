from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts import selectors, services
from accounts.access import ensure_may, request_projects
from accounts.api import serializers as s
from accounts.models import Membership, Project, Scope
from contextforge.api.validation import validated

BOUND_KEY_CANNOT_CREATE = _("This key is bound to one project: create projects with a key that is not.")
INVITED = _(
    "If a user of that name exists and is not a member yet, they are invited; they join when they accept."
)


def _project(request, slug: str, scope: str = Scope.READ) -> Project:
    """The project ``slug`` if the key sees it (404 otherwise), and if it may act there with ``scope`` (403)."""
    projects = selectors.projects_with_role(user=request.user, projects=request_projects(request))
    project = get_object_or_404(projects, slug=slug)
    if scope != Scope.READ:
        ensure_may(request, project, scope)
    return project


def _membership(project: Project, username: str) -> Membership:
    membership = selectors.membership_get(project=project, username=username)
    if membership is None:
        raise exceptions.NotFound()
    return membership


class ProjectListCreateApi(APIView):
    @extend_schema(operation_id="projects_list", responses={200: s.ProjectOutputSerializer(many=True)})
    def get(self, request):
        projects = selectors.projects_with_role(user=request.user, projects=request_projects(request))
        return Response(s.ProjectOutputSerializer(projects, many=True).data)

    @extend_schema(
        operation_id="projects_create",
        request=s.ProjectCreateInputSerializer,
        responses={201: s.ProjectOutputSerializer},
    )
    def post(self, request):
        if request.auth.project_id is not None:
            raise exceptions.PermissionDenied(BOUND_KEY_CANNOT_CREATE)
        data = validated(s.ProjectCreateInputSerializer, request.data)
        project = services.project_create(owner=request.user, **data)
        return Response(
            s.ProjectOutputSerializer(_project(request, project.slug)).data, status=status.HTTP_201_CREATED
        )


class ProjectDetailApi(APIView):
    required_scope = {"GET": Scope.READ, "PATCH": Scope.ADMIN}

    @extend_schema(operation_id="projects_retrieve", responses={200: s.ProjectOutputSerializer})
    def get(self, request, slug: str):
        return Response(s.ProjectOutputSerializer(_project(request, slug)).data)

    @extend_schema(
        operation_id="projects_update",
        request=s.ProjectUpdateInputSerializer,
        responses={200: s.ProjectOutputSerializer},
    )
    def patch(self, request, slug: str):
        project = _project(request, slug, Scope.ADMIN)
        project = services.project_update(
            project=project, **validated(s.ProjectUpdateInputSerializer, request.data)
        )
        return Response(s.ProjectOutputSerializer(project).data)


class MemberListCreateApi(APIView):
    required_scope = {"GET": Scope.READ, "POST": Scope.ADMIN}

    @extend_schema(operation_id="projects_members_list", responses={200: s.MemberOutputSerializer(many=True)})
    def get(self, request, slug: str):
        memberships = selectors.memberships_of(project=_project(request, slug))
        return Response(s.MemberOutputSerializer(memberships, many=True).data)

    @extend_schema(
        operation_id="projects_members_create",
        description="Invites a user by username: nobody joins a project without accepting. The answer is "
        "the same whether the username exists, is a member already or not.",
        request=s.MemberAddInputSerializer,
        responses={202: s.MemberInvitedOutputSerializer},
    )
    def post(self, request, slug: str):
        project = _project(request, slug, Scope.ADMIN)
        data = validated(s.MemberAddInputSerializer, request.data)
        services.invitation_address(project=project, created_by=request.user, **data)
        body = {"detail": str(INVITED), "username": data["username"].strip(), "role": data["role"]}
        return Response(s.MemberInvitedOutputSerializer(body).data, status=status.HTTP_202_ACCEPTED)


class MemberDetailApi(APIView):
    """An admin changes a member's role or removes them; anyone removes themselves (leaves)."""

    required_scope = {"PATCH": Scope.ADMIN}

    @extend_schema(
        operation_id="projects_members_update",
        request=s.MemberUpdateInputSerializer,
        responses={200: s.MemberOutputSerializer},
    )
    def patch(self, request, slug: str, username: str):
        project = _project(request, slug, Scope.ADMIN)
        membership = _membership(project, username)
        role = validated(s.MemberUpdateInputSerializer, request.data)["role"]
        membership = services.membership_change_role(membership=membership, role=role)
        return Response(s.MemberOutputSerializer(membership).data)

    @extend_schema(operation_id="projects_members_destroy", responses={204: None})
    def delete(self, request, slug: str, username: str):
        # Leaving needs only the key's write scope (checked by HasScope): a viewer may leave too.
        leaving = username == request.user.username
        project = _project(request, slug, Scope.READ if leaving else Scope.ADMIN)
        services.membership_remove(membership=_membership(project, username))
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationCreateApi(APIView):
    required_scope = Scope.ADMIN

    @extend_schema(
        operation_id="projects_invitations_create",
        request=s.InvitationInputSerializer,
        responses={201: s.InvitationOutputSerializer},
    )
    def post(self, request, slug: str):
        project = _project(request, slug, Scope.ADMIN)
        data = validated(s.InvitationInputSerializer, request.data)
        created = services.invitation_create(project=project, created_by=request.user, **data)
        body = {
            "url": request.build_absolute_uri(reverse("projects:join", args=[created.token])),
            "role": created.invitation.role,
            "expires_at": created.invitation.expires_at,
        }
        return Response(s.InvitationOutputSerializer(body).data, status=status.HTTP_201_CREATED)


def _invitation_for(request, pk: int):
    return get_object_or_404(selectors.invitations_for(user=request.user), pk=pk)


class MyInvitationListApi(APIView):
    """The invitations addressed to the key's owner."""

    @extend_schema(
        operation_id="invitations_list", responses={200: s.MyInvitationOutputSerializer(many=True)}
    )
    def get(self, request):
        invitations = selectors.invitations_for(user=request.user)
        return Response(s.MyInvitationOutputSerializer(invitations, many=True).data)


class MyInvitationAcceptApi(APIView):
    required_scope = Scope.WRITE

    @extend_schema(operation_id="invitations_accept", request=None, responses={200: s.JoinedOutputSerializer})
    def post(self, request, pk: int):
        membership = services.invitation_accept_addressed(
            invitation=_invitation_for(request, pk), user=request.user
        )
        return Response(s.JoinedOutputSerializer(membership).data)


class MyInvitationDeclineApi(APIView):
    required_scope = Scope.WRITE

    @extend_schema(operation_id="invitations_decline", responses={204: None})
    def delete(self, request, pk: int):
        services.invitation_decline(invitation=_invitation_for(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)
