"""One session on a modelfs infer file, for the e2e clients: write the
request, read the response to the end, return it parsed."""
import json
import os


def infer(path, body):
    """body: the request as bytes.  Returns the response object (which may
    be {"error": ...})."""
    fd = os.open(path, os.O_RDWR)
    try:
        os.write(fd, body)
        chunks = []
        while True:
            d = os.read(fd, 1 << 16)
            if not d:
                break
            chunks.append(d)
    finally:
        os.close(fd)
    return json.loads(b"".join(chunks))
