"""An in-process chat harness for verifiers 0.4: one model call per harness segment, no program to install.

verifiers' own tool-less harness (`null`) runs a chat program with `uv` in a process per turn: it downloads its
dependencies and costs ~8x the turn time on this machine (shared/ENVLIBS.md). A harness may instead run its loop
in process as long as every model call goes through the interception endpoint (`vf.Harness.launch`'s
contract), which this one does with the OpenAI SDK verifiers installs. A segment is one chat completion: the
task's prompt (and system prompt) at launch, the conversation so far when an environment answers
(`resume`, verifiers' default relaunch on the accreted messages). Tools are not offered (no MCP).

verifiers finds harnesses by module name under `verifiers.v1.harnesses`; `register()` puts this module there
as `rlx_chat` (`HARNESS_ID`).
"""

from __future__ import annotations

import asyncio
import sys
import weakref

import httpx
import openai
import verifiers.v1 as vf
from verifiers.v1.dialects.chat import message_to_wire

HARNESS_ID = "rlx_chat"
#: one HTTP client per event loop, shared by every segment of every episode (verifiers builds harnesses per
#: agent run): a fresh AsyncOpenAI per call builds an SSL context, 0.1 s of certificate loading, which was 2/3
#: of a 24-episode step's time (cProfile); shared, a model turn costs ~15 ms (docs/envs_verifiers.md)
CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = weakref.WeakKeyDictionary()

__all__ = ["RlxChatHarness"]


class RlxChatHarness(vf.Harness[vf.HarnessConfig]):
    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    @staticmethod
    def client(endpoint: str, secret: str) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        if loop not in CLIENTS:
            # loopback HTTP only; no timeout: a turn waits for the whole batch's sampling (verifiers' own
            # agent and episode timeouts bound it)
            http = httpx.AsyncClient(timeout=None, verify=False)
            # (openai's type for http_client names httpx2 in some releases; the object is the httpx client it uses)
            kwargs = {"base_url": endpoint, "api_key": secret, "http_client": http, "max_retries": 0}
            CLIENTS[loop] = openai.AsyncOpenAI(**kwargs)  # type: ignore[arg-type, unused-ignore]
        return CLIENTS[loop].with_options(base_url=endpoint, api_key=secret)

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, **_) -> vf.ProgramResult:
        system, prompt = self.resolve_prompt(data)
        messages: list[dict] = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt:
            messages.extend(message_to_wire(m) for m in prompt)
        client = self.client(endpoint, secret)
        try:
            reply = await client.chat.completions.create(model=ctx.model, messages=messages)  # type: ignore[arg-type, unused-ignore]
        except openai.APIError as err:  # a stopped rollout (max_turns, a @stop) answers 400: verifiers reads it
            return vf.ProgramResult(exit_code=1, stdout="", stderr=str(err))
        return vf.ProgramResult(exit_code=0, stdout=reply.choices[0].message.content or "", stderr="")


async def close_clients() -> None:
    """Close the running loop's HTTP client (before the loop closes)."""
    client = CLIENTS.pop(asyncio.get_running_loop(), None)
    if client is not None:
        await client.close()


def register() -> None:
    """Make this harness loadable as `{"id": "rlx_chat"}` (verifiers imports `verifiers.v1.harnesses.<id>`)."""
    sys.modules.setdefault(f"verifiers.v1.harnesses.{HARNESS_ID}", sys.modules[__name__])
