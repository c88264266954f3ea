"""Server-rendered pages and the form posts they make (the JSON side is ``views``).

- ``page(template, permission)``: a login-required page that needs ``permission`` (when
  one is named), rendering the decorated builder's data as ``data``; ``page_view`` makes
  one from a builder without decorating it.
- ``invalid``: a page's form that did not validate is the page again, as a 400, with the
  typed values kept and each error next to its field.
- ``form_action``: a login-required POST (CSRF checked by Django's middleware) that
  checks its own permission (``require``) and redirects when done (post/redirect/get).

A missing permission is the 403 page, an unknown object 404, other bad input 400: never
a 500.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import wraps
from typing import Any, Concatenate, ParamSpec

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from lockstep.dashboard.web.errors import error_answer, post_only
from lockstep.dashboard.web.roles import has_perm
from lockstep.dashboard.web.views import BadParameter, Build, InvalidForm, NotFound
from lockstep.workers.errors import UnknownTopicError

P = ParamSpec("P")
View = Callable[Concatenate[HttpRequest, P], HttpResponse]

# Each page view's template, permission and builder, for ``invalid`` to render the page
# again around a bound form.
_PAGES: dict[
    Callable[..., HttpResponse], tuple[str, str | None, Callable[..., dict[str, Any]]]
] = {}


def require(request: HttpRequest, permission: str, doing: str) -> None:
    """``PermissionDenied`` (the 403 page) unless the user holds ``permission``."""
    if not has_perm(request.user, permission):
        raise PermissionDenied(f"your role does not allow you to {doing}")


def page(
    template: str, permission: str | None = None, **extra: Any
) -> Callable[[Build[P]], View[P]]:
    """A login-required page (needing ``permission`` when given) rendering the decorated
    builder's data as ``data``, plus ``extra`` as is."""

    def decorate(build: Build[P]) -> View[P]:
        @login_required
        @wraps(build)
        def view(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
            try:
                if permission is not None:
                    require(request, permission, "see this page")
                data = build(request, *args, **kwargs)
            except InvalidForm as exc:
                return render(request, template, {"data": exc.data, **extra}, status=400)
            except (PermissionDenied, NotFound, UnknownTopicError, BadParameter) as exc:
                return refusal(request, exc)
            return render(request, template, {"data": data, **extra})

        _PAGES[view] = (template, permission, build)
        return view

    return decorate


def page_view(template: str, build: Build[P], **extra: Any) -> View[P]:
    """``page(template, **extra)`` made from ``build``, named ``<build>_page``."""
    view = page(template, **extra)(build)
    view.__name__ = view.__qualname__ = f"{build.__name__}_page"
    return view


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
    if permission is not None:
        require(request, permission, "see this page")
    data = {**build(request, *args), **forms}
    return render(request, template, {"data": data}, status=400)


def form_action(view: View[P]) -> View[P]:
    """A login-required POST (CSRF checked by the middleware) answering errors with the
    error page; the view checks its permission first and redirects when done."""

    @login_required
    @post_only
    @wraps(view)
    def wrapped(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except (PermissionDenied, NotFound, BadParameter) as exc:
            return refusal(request, exc)

    return wrapped


def refusal(request: HttpRequest, exc: Exception) -> HttpResponse:
    """The error page for an exception a page or a form post raised."""
    if isinstance(exc, PermissionDenied):
        return error_answer(request, 403, str(exc) or "permission denied")
    if isinstance(exc, (NotFound, UnknownTopicError)):
        return error_answer(request, 404, str(exc))
    return error_answer(request, 400, str(exc))
