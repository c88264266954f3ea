"""What the alert pages share: the login and permission rules, error answers as the
error page, and reading form fields.

A page (``page``) needs a session and the view permission it names; an action
(``action``) is a POST with the CSRF token (checked by the middleware), the permission
it names, then a redirect back (post/redirect/get). A form that does not validate is its
page again (``invalid``): status 400, the typed values kept and each error next to its
field. A missing permission is the 403 error page, other bad input 400 and an unknown id
404: never a 500.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any, Concatenate, ParamSpec

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, PermissionsMixin
from django.core.exceptions import PermissionDenied
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from lockstep.dashboard.monitor.views.common import BadParameter, NotFound, refuse_nul
from lockstep.dashboard.monitor.views.errors import post_only

P = ParamSpec("P")
Build = Callable[Concatenate[HttpRequest, P], dict[str, Any]]
Action = Callable[Concatenate[HttpRequest, P], HttpResponse]

VIEW_ALERT = "alerts.view_alert"
ACKNOWLEDGE = "alerts.acknowledge_alert"
VIEW_SILENCE = "alerts.view_silence"
MANAGE_SILENCE = "alerts.manage_silence"
VIEW_RULES = "alerts.view_rulesetting"
CHANGE_RULES = "alerts.change_rulesetting"
VIEW_CHANNELS = "alerts.view_channel"
CHANGE_CHANNELS = "alerts.change_channel"

# Each page view's template, view permission and builder, for ``invalid`` to render the
# page again around a bound form.
_PAGES: dict[Callable[..., HttpResponse], tuple[str, str, Callable[..., dict[str, Any]]]] = {}


def has_perm(user: AbstractBaseUser | AnonymousUser, permission: str) -> bool:
    return isinstance(user, PermissionsMixin) and user.has_perm(permission)


def require(request: HttpRequest, permission: str, doing: str) -> None:
    """``PermissionDenied`` (the 403 page) unless the user holds ``permission``."""
    if not has_perm(request.user, permission):
        raise PermissionDenied(f"your role does not allow you to {doing}")


def error_page(request: HttpRequest, status: int, message: str) -> HttpResponse:
    titles = {400: "Bad request", 403: "Forbidden", 404: "Not found"}
    context = {"title": titles.get(status, "Error"), "message": message}
    return render(request, "monitor/error.html", context, status=status)


def _answer(request: HttpRequest, exc: Exception) -> HttpResponse:
    if isinstance(exc, PermissionDenied):
        return error_page(request, 403, str(exc) or "permission denied")
    if isinstance(exc, NotFound):
        return error_page(request, 404, str(exc))
    return error_page(request, 400, str(exc))


def page(
    template: str, permission: str
) -> Callable[[Build[P]], Callable[Concatenate[HttpRequest, P], HttpResponse]]:
    """A login-required page needing ``permission`` that renders the decorated builder's
    data as ``data``."""

    def decorate(build: Build[P]) -> Callable[Concatenate[HttpRequest, P], HttpResponse]:
        @login_required
        @wraps(build)
        def view(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
            try:
                require(request, permission, "see this page")
                data = build(request, *args, **kwargs)
            except (PermissionDenied, NotFound, BadParameter) as exc:
                return _answer(request, exc)
            return render(request, template, {"data": data})

        _PAGES[view] = (template, permission, build)
        return view

    return decorate


def invalid(
    request: HttpRequest,
    page_view: Callable[..., HttpResponse],
    forms: Mapping[str, Form],
    *args: Any,
) -> HttpResponse:
    """``page_view``'s page (built for ``args``) again, with ``forms`` (bound forms that
    failed) in its data in place of blank ones, as a 400: the template shows the typed
    values and each error next to its field (``alerts/_field_errors.html``)."""
    template, permission, build = _PAGES[page_view]
    require(request, permission, "see this page")
    data = {**build(request, *args), **forms}
    return render(request, template, {"data": data}, status=400)


def action(view: Action[P]) -> Action[P]:
    """A login-required POST (CSRF checked by the middleware) answering errors with the
    error page; the view checks its permission first and redirects when done."""

    @login_required
    @post_only
    @wraps(view)
    def wrapped(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except (PermissionDenied, NotFound, BadParameter) as exc:
            return _answer(request, exc)

    return wrapped


# ---- form fields -------------------------------------------------------------------------


def text(params: Mapping[str, str], name: str, max_length: int = 255) -> str:
    value = (params.get(name) or "").strip()
    if len(value) > max_length:
        raise BadParameter(f"{name} is longer than {max_length} characters")
    refuse_nul(value, name)
    return value


def choice(params: Mapping[str, str], name: str, allowed: Any, default: str = "") -> str:
    value = text(params, name) or default
    if value and value not in allowed:
        raise BadParameter(f"{name} must be one of: {', '.join(sorted(allowed))}; got {value!r}")
    return value


def flag(params: Mapping[str, str], name: str) -> bool:
    return (params.get(name) or "").strip().lower() in ("1", "on", "true", "yes")


def row_id(raw: str, what: str) -> int:
    """An id from the URL or a form; ``NotFound`` when it cannot be one."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:  # "²".isdigit() too
        raise NotFound(f"no {what} {raw[:40]!r}")
    return int(raw)
