"""``DELETE /api/sessions``: the caller forgets every conversation of theirs at once, in every
agent's store (in memory, and on a real Redis), another user's untouched; a caller the service
cannot name may not delete "everyone's"."""

from __future__ import annotations

from agent_executor import AgentExecutor, ScriptedModel
from agent_executor.messages import AssistantMessage, UserMessage
from agent_executor.redis import RedisConversationStore

from .redis_server import RedisServer
from .server_helpers import serve

TURN = [UserMessage(content="hi"), AssistantMessage(content="hello")]


async def test_the_callers_sessions_go_and_no_one_elses() -> None:
    agent = AgentExecutor(model=ScriptedModel(["a", "b", "c"]), name="solo")
    ann, bob = {"X-User-Id": "ann"}, {"X-User-Id": "bob"}
    async with serve(agent) as client:
        for session, who in (("s1", ann), ("s2", ann), ("s1", bob)):
            body = {"message": "hi", "session_id": session}
            assert (await client.post("/api/chat", json=body, headers=who)).status_code == 200
        nobody = await client.delete("/api/sessions")
        deleted = await client.delete("/api/sessions", headers=ann)
        again = await client.delete("/api/sessions", headers=ann)

    assert nobody.status_code == 400
    assert deleted.json() == {"user_id": "ann", "deleted": 2}
    assert again.json() == {"user_id": "ann", "deleted": 0}
    assert await agent.memory.load("ann", "s1") == []
    assert len(await agent.memory.load("bob", "s1")) == 2


async def test_a_redis_store_forgets_one_users_sessions(redis_running: RedisServer) -> None:
    store = RedisConversationStore(redis_running.url)
    try:
        await store.append("ann", "s1", TURN)
        await store.append("ann", "s:2*", TURN)  # a session id with glob characters
        await store.append("ann2", "s1", TURN)  # a user whose id starts like ann's
        await store.append("bob", "s1", TURN)
        assert await store.delete_user("ann") == 2
        assert await store.load("ann", "s1") == [] and await store.load("ann", "s:2*") == []
        assert len(await store.load("ann2", "s1")) == 2
        assert len(await store.load("bob", "s1")) == 2
    finally:
        await store.aclose()
