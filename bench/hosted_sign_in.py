"""Signs a user in on Gatehouse's hosted page, as a browser would, and
prints the sign-in cookie (`gh_login=…`) for more authorization requests.
Only loopback is dialled: the redirect to the client is read, not followed.

    python3 bench/hosted_sign_in.py <base URL> <authorization path and query> <email> <password>
"""
import http.client
import sys
import urllib.parse
from html.parser import HTMLParser


class Form(HTMLParser):
    def __init__(self):
        super().__init__()
        self.action, self.fields = None, {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form" and self.action is None:
            self.action = attrs.get("action", "")
        elif tag == "input" and attrs.get("name"):
            self.fields.setdefault(attrs["name"], attrs.get("value") or "")


def cookies(response):
    return {
        value.split(";")[0].split("=", 1)[0]: value.split(";")[0]
        for name, value in response.getheaders()
        if name.lower() == "set-cookie"
    }


base, authorize, email, password = sys.argv[1:5]
connection = http.client.HTTPConnection(urllib.parse.urlsplit(base).netloc)
connection.request("GET", authorize)
page = connection.getresponse()
jar = cookies(page)
form = Form()
form.feed(page.read().decode())
body = urllib.parse.urlencode({**form.fields, "email": email, "password": password})
headers = {"content-type": "application/x-www-form-urlencoded", "cookie": "; ".join(jar.values())}
connection.request("POST", form.action, body, headers)
answer = connection.getresponse()
answer.read()
assert answer.status == 303 and "code=" in answer.getheader("location", ""), answer.status
print(cookies(answer)["gh_login"])
