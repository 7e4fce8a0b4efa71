"""Other services' APIs, served so that their clients need change only their base URL: the
Bot Server's (:mod:`.bot_server`, under ``/compat/bot-server``)."""

from .bot_server import PREFIX as BOT_SERVER_PREFIX
from .bot_server import add_bot_server_routes
from .bot_server import health as bot_server_health

__all__ = ["BOT_SERVER_PREFIX", "add_bot_server_routes", "bot_server_health"]
