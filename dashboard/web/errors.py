"""Error answers for what no view handles itself: an address no route matches (404), a
request Django refuses before any view (400: a disallowed host, too many fields), a
permission error raised out of a view (403), a form whose CSRF token is missing or stale
(403, ``CSRF_FAILURE_VIEW``), an unexpected exception (500), and a page form posted to
with GET (405).

Same shapes as the views' own errors (``common``): ``{"error": ...}`` JSON under
``/api/``, a page in the dashboard's layout elsewhere (``404.html``, ``403.html``,
``403_csrf.html``, ``500.html``; other statuses ``monitor/error.html``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Concatenate, ParamSpec

from django.http import HttpRequest, HttpResponse, HttpResponseServerError, JsonResponse
from django.shortcuts import render
from django.template import loader

P = ParamSpec("P")
TITLES = {400: "Bad request", 403: "Forbidden", 404: "Not found", 405: "Method not allowed"}
# Statuses with a page of their own (the rest share monitor/error.html).
TEMPLATES = {403: "403.html", 404: "404.html"}


def error_answer(request: HttpRequest, status: int, message: str) -> HttpResponse:
    """``{"error": message}`` for the JSON API, the error page for everything else."""
    if is_api(request):
        return JsonResponse({"error": message}, status=status)
    context = {"title": TITLES.get(status, "Error"), "message": message}
    template = TEMPLATES.get(status, "monitor/error.html")
    return render(request, template, context, status=status)


def is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """``handler404``. The address is not echoed: it may be anything."""
    return error_answer(request, 404, "there is no page at this address")


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """``handler400`` (Django's own refusals; the views answer their 400s themselves)."""
    return error_answer(request, 400, "the request could not be understood")


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """``handler403``: the permission error's message when it has one."""
    return error_answer(request, 403, str(exception or "") or "permission denied")


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """``CSRF_FAILURE_VIEW``: a form sent without a valid token (a page left open across a
    log-out or a restart). The page says so and how to send it again; Django's reason
    (technical) is for the JSON answer only."""
    if is_api(request):
        return JsonResponse({"error": f"CSRF check failed: {reason}"}, status=403)
    context = {"back": _same_site_referer(request)}
    return render(request, "403_csrf.html", context, status=403)


def _same_site_referer(request: HttpRequest) -> str:
    """The page the form was on, when it is one of ours (never a link to elsewhere)."""
    referer = request.headers.get("Referer", "")
    origin = f"{request.scheme}://{request.get_host()}/"
    return referer if referer.startswith(origin) else ""


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: JSON under ``/api/``, else ``500.html`` rendered without a request
    context (as Django's own handler does): the failure may be the database or a context
    processor, so the page needs neither."""
    if is_api(request):
        return JsonResponse({"error": "internal server error"}, status=500)
    return HttpResponseServerError(loader.get_template("500.html").render())


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
