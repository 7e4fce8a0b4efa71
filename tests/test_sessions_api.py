"""``DELETE /api/sessions/{id}``: the owning user forgets a conversation."""

from __future__ import annotations

from agent_executor import AgentCommand, InMemoryConversationStore
from server import Settings

from .helpers import make_executor
from .server_helpers import serve

KEYS = Settings(api_keys={"key-alice": "alice", "key-bob": "bob"})


async def test_the_owner_forgets_a_session_and_nobody_else_can() -> None:
    memory = InMemoryConversationStore()
    executor = make_executor(["Hi Alice.", "Hi Bob.", "Hello again."], memory=memory)
    alice = {"Authorization": "Bearer key-alice"}
    bob = {"Authorization": "Bearer key-bob"}
    async with serve(executor, KEYS) as client:
        for headers in (alice, bob):
            chat = await client.post(
                "/api/chat", json={"message": "hi", "session_id": "s1"}, headers=headers
            )
            assert chat.status_code == 200

        # a user id in the query does not override the key's user
        gone = await client.delete("/api/sessions/s1?user_id=bob", headers=alice)
        again = await client.delete("/api/sessions/s1", headers=alice)
        anonymous = await client.delete("/api/sessions/s1")
        missing = await client.delete("/api/sessions/nope", headers=bob)
        later = await client.post(
            "/api/chat", json={"message": "who?", "session_id": "s1"}, headers=alice
        )

    assert gone.status_code == 200 and gone.json() == {"session_id": "s1", "deleted": True}
    assert again.status_code == 404 and "error" in again.json()
    assert anonymous.status_code == 401
    assert missing.status_code == 404
    # a fresh start after the delete
    assert [m.content for m in await memory.load("alice", "s1")] == ["who?", "Hello again."]
    assert [m.content for m in await memory.load("bob", "s1")] == ["hi", "Hi Bob."]
    assert later.json()["content"] == "Hello again."


async def test_without_keys_the_owner_is_the_user_id_given() -> None:
    executor = make_executor(["one"])
    await executor.execute(AgentCommand(user_prompt="hi", user_id="u1", session_id="s"))
    async with serve(executor) as client:
        wrong = await client.delete("/api/sessions/s", params={"user_id": "u2"})
        right = await client.delete("/api/sessions/s", headers={"X-User-Id": "u1"})

    assert wrong.status_code == 404
    assert right.status_code == 200
    assert await executor.memory.load("u1", "s") == []
