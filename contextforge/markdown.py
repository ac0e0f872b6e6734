"""Stored text as people read it: Markdown rendered to HTML that can carry nothing but formatting."""

from __future__ import annotations

import nh3
from markdown_it import MarkdownIt

# CommonMark with raw HTML off (markdown-it escapes it), plus tables and strikethrough. Images stay text:
# the Content-Security-Policy would refuse another site's picture anyway.
_PARSER = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"]).disable("image")
# What the parser above can produce, and nothing else.
ALLOWED_TAGS = {
    *("p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "code"),
    *("ul", "ol", "li", "em", "strong", "s", "a"),
    *("table", "thead", "tbody", "tr", "th", "td"),
}
# No style attribute: the Content-Security-Policy refuses inline styles (a table's column alignment).
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
# Links lead to web pages or mail, never to a script (javascript:) or an inline document (data:).
URL_SCHEMES = {"http", "https", "mailto"}


def render_markdown(text: str) -> str:
    """``text`` as sanitized HTML: the parser refuses raw HTML and unsafe links, and nh3 keeps only the
    tags, attributes and URL schemes above whatever the parser let through."""
    return nh3.clean(
        _PARSER.render(text or ""),
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )
