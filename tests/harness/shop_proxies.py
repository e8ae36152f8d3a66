"""A refund service and its tool proxies as an HCP declares them (shared by the harness and proxy
tests, and the child process that crashes mid-call)."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from molt.hcp.v1 import ToolProxy


def proxies(url: str) -> list[ToolProxy]:
    parameters = {"type": "object", "properties": {"order": {"type": "string"}, "amount": {"type": "number"}, "token": {"type": "string"}}, "required": ["order", "amount", "token"]}
    fields = {"token": "noai", "card": "noai"}
    return [
        ToolProxy(name="refund", description="Refund an order.", url=f"{url}/refunds", parameters=parameters, fields=fields, inject={"token": "SHOP_TOKEN"}, side_effect=True, compensate="cancel_refund"),
        ToolProxy(name="cancel_refund", url=f"{url}/cancellations", parameters=parameters, fields=fields, inject={"token": "SHOP_TOKEN"}, side_effect=True),
    ]


class Shop:
    """A refund service that honours Idempotency-Key, as payment APIs do; counts real side effects."""

    def __init__(self):
        self.refunds: list[dict] = []
        self.cancelled: list[str] = []
        self.by_key: dict[str, dict] = {}
        self.tokens: list[str] = []
        shop = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                shop.tokens.append(body.pop("token", ""))
                key = self.headers["Idempotency-Key"]
                if key not in shop.by_key:
                    if self.path == "/refunds":
                        shop.refunds.append(body)
                        shop.by_key[key] = {"refund_id": f"r{len(shop.refunds)}", "order": body["order"], "card": {"number": "4111 1111 1111 1111", "last4": "1111"}}
                    else:
                        shop.cancelled.append(body["order"])
                        shop.by_key[key] = {"cancelled": body["order"]}
                data = json.dumps(shop.by_key[key]).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
