"""A scripted conversation with a real MAF ``Agent``: a fake chat client (no network) that
answers from what it is shown, and one tool.

Run as a module it plays some of the questions against the agentfolio history provider
and prints, as JSON, every message list the model was shown; the tests run it twice in
separate processes (a restart in between) and compare with one in-memory run::

    python -m tests.integrations.maf.conversation --session S --first 0 --last 2 [--url U --token T]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import warnings
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any

import orjson
from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    Message,
    ResponseStream,
    tool,
)

QUESTIONS = [
    "Hello, who are you?",
    "What is the weather in Paris?",
    "Search the web for croissants.",
    "Thanks, and the weather in Oslo?",
    "Summarise our talk.",
]
AGENT_NAME = "forecaster"


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}" if city == "Paris" else f"snow in {city}"


class FakeChatClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Answers from what it is shown, so that a different history gives different answers:
    a weather question calls the tool; a tool result is read back; a search returns hosted
    tool contents durable state has no type for; anything else is answered with a count of
    the messages it was shown."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seen: list[list[dict[str, Any]]] = []

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        self.seen.append([message.to_dict() for message in messages])
        if not stream:
            return self._answer(list(messages))

        async def updates() -> AsyncIterator[ChatResponseUpdate]:
            response = await self._answer(list(messages))
            for message in response.messages:
                yield ChatResponseUpdate(role=message.role, contents=message.contents, message_id=message.message_id)

        return ResponseStream(updates(), finalizer=ChatResponse.from_updates)

    async def _answer(self, messages: list[Message]) -> ChatResponse:
        last = messages[-1]
        turn = sum(1 for message in messages if message.role == "user")
        shown = 10 * len(messages)
        usage = {"input_token_count": shown, "output_token_count": 7, "total_token_count": shown + 7}
        if last.role == "user" and "weather" in last.text:
            city = "Oslo" if "Oslo" in last.text else "Paris"
            call = Content.from_function_call(f"call_{turn}", "get_weather", arguments=f'{{"city": "{city}"}}',
                                              id=f"fc_{turn}")
            return ChatResponse(messages=[Message("assistant", [call])], usage_details=usage)
        if last.role == "tool":
            result = next(c for c in last.contents if c.type == "function_result")
            return ChatResponse(messages=[Message("assistant", [f"The tool says: {result.result}."])],
                                usage_details=usage)
        if "Search" in last.text:
            contents = [
                Content.from_search_tool_call(f"ws_{turn}", tool_name="web_search", arguments={"q": "croissants"},
                                              status="completed"),
                Content.from_search_tool_result(f"ws_{turn}", tool_name="web_search",
                                                result=[{"url": "https://example.com/croissant",
                                                         "title": "Croissant"}]),
                Content.from_text("Croissants are flaky.", annotations=[
                    {"type": "citation", "title": "Croissant", "url": "https://example.com/croissant"}]),
            ]
            return ChatResponse(messages=[Message("assistant", contents, message_id=f"msg_{turn}")],
                                usage_details=usage)
        reasoning = Content.from_text_reasoning(id=f"rs_{turn}", text=f"{len(messages)} messages so far",
                                                protected_data="opaque-signature")
        answer = f"Turn {turn}: I have seen {len(messages)} messages; last was {last.text!r}."
        return ChatResponse(messages=[Message("assistant", [reasoning, answer])], usage_details=usage)


async def converse(context_providers: list[Any] | None, session_id: str, questions: Sequence[str]
                   ) -> list[list[dict[str, Any]]]:
    """Ask ``questions`` in one session; every message list the model was shown, in order."""
    client = FakeChatClient()
    agent = Agent(client=client, name=AGENT_NAME, instructions="Answer briefly.", tools=[get_weather],
                  context_providers=context_providers)
    session = agent.create_session(session_id=session_id)
    for question in questions:
        await agent.run(question, session=session)
    return client.seen


def without_attribution(seen: list[list[dict[str, Any]]]) -> list[list[dict[str, Any]]]:
    """MAF stamps loaded history with the loading provider's name: leave that out of comparisons."""
    cleaned = orjson.loads(orjson.dumps(seen))
    for messages in cleaned:
        for message in messages:
            (message.get("additional_properties") or {}).pop("_attribution", None)
    return cleaned


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--session", required=True)
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--last", type=int, default=len(QUESTIONS) - 1)
    parser.add_argument("--url")
    parser.add_argument("--token")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from agentfolio.integrations.maf import AgentfolioHistoryProvider

    async def run() -> list[list[dict[str, Any]]]:
        async with AgentfolioHistoryProvider(url=args.url, token=args.token) as provider:
            return await converse([provider], args.session, QUESTIONS[args.first:args.last + 1])

    sys.stdout.buffer.write(orjson.dumps(asyncio.run(run())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
