"""Error answers for what no view handles itself: an address no route matches (404), a
request Django refuses before any view (400: a disallowed host, too many fields), a
permission error raised out of a view (403), and a page form posted to with GET (405).

Same shapes as the views' own errors (``common``): ``{"error": ...}`` JSON under
``/api/``, the error page elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Concatenate, ParamSpec

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

P = ParamSpec("P")
TITLES = {400: "Bad request", 403: "Forbidden", 404: "Not found", 405: "Method not allowed"}


def error_answer(request: HttpRequest, status: int, message: str) -> HttpResponse:
    """``{"error": message}`` for the JSON API, the error page for everything else."""
    if request.path.startswith("/api/"):
        return JsonResponse({"error": message}, status=status)
    context = {"title": TITLES.get(status, "Error"), "message": message}
    return render(request, "monitor/error.html", context, status=status)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """``handler404``. The address is not echoed: it may be anything."""
    return error_answer(request, 404, "there is no page at this address")


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """``handler400`` (Django's own refusals; the views answer their 400s themselves)."""
    return error_answer(request, 400, "the request could not be understood")


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """``handler403``: the permission error's message when it has one."""
    return error_answer(request, 403, str(exception or "") or "permission denied")


def post_only(
    view: Callable[Concatenate[HttpRequest, P], HttpResponse],
) -> Callable[Concatenate[HttpRequest, P], HttpResponse]:
    """Like ``require_POST``, but a GET (a link followed, an address typed) gets the error
    page saying why, with ``Allow: POST``, instead of an empty 405."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
        if request.method != "POST":
            response = error_answer(request, 405, "this address only takes a form post")
            response["Allow"] = "POST"
            return response
        return view(request, *args, **kwargs)

    return wrapped
