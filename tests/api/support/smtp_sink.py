"""A real SMTP server for the messaging tests (aiosmtpd): listens on
127.0.0.1:<port>, accepts AUTH PLAIN/LOGIN for one username and password
over the plain connection (the test server offers no TLS), and appends each
message it receives to <out> as one JSON line. Prints "ready" once it listens.

    python3 smtp_sink.py <port> <out> <username> <password>
"""
import email
import json
import logging
import sys
import time
import warnings

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

# The test server offers no TLS on purpose: quiet its warnings about that.
warnings.simplefilter("ignore")
logging.disable(logging.WARNING)

port, out, username, password = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]


class Sink:
    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content)
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "subject": message["subject"],
            "body": message.get_payload(decode=True).decode(),
            "authenticated": bool(session.authenticated),
        }
        with open(out, "a") as f:
            f.write(json.dumps(record) + "\n")
        return "250 OK"


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = isinstance(auth_data, LoginPassword) and auth_data.login.decode() == username \
        and auth_data.password.decode() == password
    return AuthResult(success=ok, handled=False)


controller = Controller(Sink(), hostname="127.0.0.1", port=port, authenticator=authenticator,
                        auth_require_tls=False, auth_required=True)
controller.start()
print("ready", flush=True)
while True:
    time.sleep(3600)
