from django.contrib import admin

from knowledge import services
from knowledge.models import ItemVersion, KnowledgeItem, Relation

VERSION_FIELDS = ["pgh_id", "pgh_created_at", "action", "who", "title", "content", "tags", "deleted_at"]


def who(version: ItemVersion) -> str:
    context = version.context
    return " · ".join(str(context[k]) for k in ("user", "key", "channel") if context.get(k))


class VersionInline(admin.TabularInline):
    """An item's history, newest first; versions are never edited."""

    model = ItemVersion
    fk_name = "pgh_obj"
    fields = readonly_fields = VERSION_FIELDS
    can_delete = False
    extra = 0

    @admin.display(description="who (user id · key · channel)")
    def who(self, version):
        return who(version)

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(KnowledgeItem)
class KnowledgeItemAdmin(admin.ModelAdmin):
    list_display = ["title", "project", "updated_at", "deleted_at"]
    list_filter = ["project"]
    search_fields = ["title", "content"]
    fields = ["project", "title", "content", "tags", "created_at", "updated_at", "archived_at", "deleted_at"]
    readonly_fields = ["project", "created_at", "updated_at", "archived_at", "deleted_at"]
    inlines = [VersionInline]

    def has_add_permission(self, request) -> bool:
        return False  # items are written where they are embedded: the dashboard, the API, MCP, imports

    # Writes go through the services: re-embedded when the text changes, deleted to the trash.
    def save_model(self, request, obj, form, change):
        services.item_update(
            item=obj, **{name: form.cleaned_data[name] for name in ("title", "content", "tags")}
        )

    def delete_model(self, request, obj):
        services.item_delete(item=obj)

    def delete_queryset(self, request, queryset):
        for item in queryset:
            services.item_delete(item=item)


@admin.register(ItemVersion)
class ItemVersionAdmin(admin.ModelAdmin):
    list_display = ["pgh_id", "pgh_created_at", "action", "who", "title", "project"]
    list_filter = ["project"]
    search_fields = ["title", "content"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="who")
    def who(self, version):
        return who(version)


@admin.register(Relation)
class RelationAdmin(admin.ModelAdmin):
    """Relations are made where the items are seen (the item page, the API, MCP); here they can be
    looked up and removed, and the removal is recorded on the admin channel."""

    list_display = ["id", "source", "kind", "target", "project", "created_by", "created_at"]
    list_filter = ["project", "kind"]
    readonly_fields = ["project", "source", "kind", "target", "created_by", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def delete_model(self, request, obj):
        services.unrelate(relation=obj, actor=request.user)

    def delete_queryset(self, request, queryset):
        for relation in queryset:
            services.unrelate(relation=relation, actor=request.user)
