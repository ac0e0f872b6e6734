from django.contrib import admin

from tasks import services
from tasks.models import Comment, Task


class CommentInline(admin.TabularInline):
    model = Comment
    extra = 0


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["short_id", "title", "project", "status", "priority", "assignee", "due_date"]
    list_filter = ["project", "status", "priority"]
    search_fields = ["title", "description"]
    raw_id_fields = ["source_item", "assignee", "created_by"]
    inlines = [CommentInline]

    # A task deleted here that came from a wish brings the wish back to memory, never leaves it archived.
    def delete_model(self, request, obj):
        services.task_delete(task=obj, wish=services.WISH_RESTORE)

    def delete_queryset(self, request, queryset):
        for task in queryset:
            services.task_delete(task=task, wish=services.WISH_RESTORE)
