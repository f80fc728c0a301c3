/* The floor of issue 26: the cheapest HTTP request/response over libevent's
 * evhttp (the library the coordinator serves its API with), a fixed reply to
 * every request. bench/scale_harness.py drives it with the same signed
 * heartbeats it sends the coordinator, so tony's cost per heartbeat reads as
 * a multiple of this. Prints its port on stdout, then serves until killed. */
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <stdio.h>

static void answer(struct evhttp_request *req, void *arg) {
    (void)arg;
    struct evbuffer *out = evhttp_request_get_output_buffer(req);
    evbuffer_add(out, "{\"status\":\"ok\"}", 15);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, 200, "OK", NULL);
}

int main(void) {
    struct event_base *base = event_base_new();
    struct evhttp *http = base ? evhttp_new(base) : NULL;
    struct evhttp_bound_socket *sock = http ? evhttp_bind_socket_with_handle(http, "127.0.0.1", 0) : NULL;
    if (!sock) {
        fprintf(stderr, "floor: cannot serve on 127.0.0.1\n");
        return 1;
    }
    evhttp_set_gencb(http, answer, NULL);
    struct sockaddr_storage ss;
    ev_socklen_t len = sizeof ss;
    if (getsockname(evhttp_bound_socket_get_fd(sock), (struct sockaddr *)&ss, &len) != 0) return 1;
    printf("%d\n", ntohs(((struct sockaddr_in *)&ss)->sin_port));
    fflush(stdout);
    return event_base_dispatch(base) == 0 ? 0 : 1;
}
