"""A script with its own little rendezvous: the first process of every host serves its host's
name on one fixed port, and every process asks every host for it, by name. On SageMaker each
host has its own network, so the same port is free on every host.

``--fetch URL``: also fetch URL (a server this machine reaches) and say how that went.
"""

import argparse
import json
import os
import socket
import threading
import time
import urllib.request

PORT = 6000


def serve(server: socket.socket, host: str) -> None:
    while True:
        connection, _ = server.accept()
        with connection:
            connection.sendall(host.encode())


def ask(host: str) -> str:
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection((host, PORT), timeout=5) as connection:
                return connection.recv(100).decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fetch", default="")
    args, _ = parser.parse_known_args()  # a TensorFlow launch adds --model_dir
    hosts = json.loads(os.environ["SM_HOSTS"])
    me, local_rank = os.environ["SM_CURRENT_HOST"], int(os.environ.get("LOCAL_RANK", "0"))
    if local_rank == 0:
        server = socket.socket()
        server.bind(("0.0.0.0", PORT))
        server.listen()
        threading.Thread(target=serve, args=(server, socket.gethostname()), daemon=True).start()
    answers = {host: ask(host) for host in hosts}
    rank = os.environ.get("RANK", str(hosts.index(me)))  # one process per host: its index
    print(f"{me} rank {rank}: answers {json.dumps(answers)}", flush=True)
    if args.fetch and local_rank == 0:
        try:
            with urllib.request.urlopen(args.fetch, timeout=10) as response:
                print(f"{me}: fetched {response.read().decode()}", flush=True)
        except OSError as error:
            print(f"{me}: could not fetch: {error}", flush=True)
    time.sleep(2)  # every host answers until the others have asked


if __name__ == "__main__":
    main()
