"""A LangChain agent (``create_agent``) with a fake chat model and one tool, traced by the
published prefactor-langchain callback handler as its README shows for LangGraph graphs
(which is what ``create_agent`` builds).

    python langchain_agent.py API_URL API_TOKEN
"""

import asyncio
import sys

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from prefactor_core import PrefactorCoreConfig, SchemaRegistry
from prefactor_http.config import HttpClientConfig
from prefactor_langchain import PrefactorCallbackHandler, register_langchain_schemas


@tool
async def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class FakeToolCallingModel(GenericFakeChatModel):
    """Answers from its script; binding tools changes nothing (the script already calls them)."""

    def bind_tools(self, tools, **kwargs):  # type: ignore[no-untyped-def]
        return self


async def main(api_url: str, api_token: str) -> None:
    model = FakeToolCallingModel(messages=iter([
        AIMessage(content="", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}]),
        AIMessage(content="It is sunny in Paris."),
    ]))
    graph = create_agent(model, tools=[get_weather])

    registry = SchemaRegistry()
    tool_span_types = register_langchain_schemas(registry)
    config = PrefactorCoreConfig(http_config=HttpClientConfig(api_url=api_url, api_token=api_token),
                                 schema_registry=registry)
    client = PrefactorCallbackHandler.create_client(config)
    await client.initialize()
    instance = await client.create_agent_instance(
        agent_id="weather-agent", agent_version={"name": "Weather Agent", "external_identifier": "weather-v1"})
    await instance.start()
    handler = PrefactorCallbackHandler(instance=instance, tool_span_types=tool_span_types)
    result = await graph.ainvoke({"messages": [{"role": "user", "content": "What is the weather in Paris?"}]},
                                 config={"callbacks": [handler]})
    await instance.finish()
    await client.close()
    print(result["messages"][-1].content)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
