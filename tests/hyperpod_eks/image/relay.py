"""The operator's hands inside the job's network: requests to the pods' agents, relayed.

The emulated hosts' network is a bridge of the job's own, which the test process is not on; this
runs on one more host of it. The operator writes ``<folder>/request-N.json``
(``{"method", "url", "body"}``), this answers ``<folder>/response-N.json`` (``{"status",
"body"}``, status 0 when the agent did not answer). Standard library only.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request


def relay(request: dict) -> dict:
    data = None if request.get("body") is None else json.dumps(request["body"]).encode()
    asked = urllib.request.Request(
        request["url"],
        data=data,
        method=request["method"],
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(asked, timeout=5) as answer:
            return {"status": answer.status, "body": answer.read().decode()}
    except urllib.error.HTTPError as error:
        return {"status": error.code, "body": error.read().decode()}
    except (OSError, ValueError) as error:
        return {"status": 0, "body": str(error)}


def main() -> None:
    folder = sys.argv[1]
    while True:
        for name in sorted(os.listdir(folder)):
            if not (name.startswith("request-") and name.endswith(".json")):
                continue
            path = os.path.join(folder, name)
            with open(path) as handle:
                request = json.load(handle)
            os.remove(path)
            answer = os.path.join(folder, name.replace("request-", "response-"))
            with open(answer + ".part", "w") as handle:
                json.dump(relay(request), handle)
            os.replace(answer + ".part", answer)
        time.sleep(0.05)


if __name__ == "__main__":
    main()
