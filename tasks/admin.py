from django.contrib import admin

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
