"""One HTTP request as the tests' clients make it (the sim tests, and molecule/fleet through its conftest)."""

import http.client
import json
import urllib.error
import urllib.request


def call(url, body=None, key=None, stream=False, timeout=20):
    """(status, the JSON answer or its text, or for a stream its data lines); (-1, the error) when no answer came:
    refused, reset, or a stream cut short (IncompleteRead), each a request lost."""
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    if key:
        request.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            text = answer.read().decode()
            if stream:
                return answer.status, [line[6:] for line in text.splitlines() if line.startswith("data: ")]
            return answer.status, json.loads(text) if text else None
    except urllib.error.HTTPError as error:
        text = error.read().decode()
        try:
            return error.code, json.loads(text)
        except ValueError:
            return error.code, text
    except (OSError, http.client.HTTPException) as error:
        return -1, repr(error)
