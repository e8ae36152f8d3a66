"""The shop's tool proxies as an HCP declares them (shared by the tests and their crashing child)."""

from molt.hcp.v1 import ToolProxy


def proxies(url: str) -> list[ToolProxy]:
    parameters = {"type": "object", "properties": {"order": {"type": "string"}, "amount": {"type": "number"}, "token": {"type": "string"}}, "required": ["order", "amount", "token"]}
    fields = {"token": "noai", "card": "noai"}
    return [
        ToolProxy(name="refund", description="Refund an order.", url=f"{url}/refunds", parameters=parameters, fields=fields, inject={"token": "SHOP_TOKEN"}, side_effect=True, compensate="cancel_refund"),
        ToolProxy(name="cancel_refund", url=f"{url}/cancellations", parameters=parameters, fields=fields, inject={"token": "SHOP_TOKEN"}, side_effect=True),
    ]
