"""The control API: fault injection in front of handler dispatch and the broker controls
(`interceptor`), and the same over HTTP for programs in any language (`http_api`).
"""
