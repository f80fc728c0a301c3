/* YARN application, attempt and container ids: parsing the strings YARN puts
 * in the environment (CONTAINER_ID), formatting them the way YARN does, and
 * converting to and from the protobuf messages on the wire. */
#ifndef TONY_YARN_IDS_H
#define TONY_YARN_IDS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* application_<cluster_ts>_<id %04d> */
typedef struct yarn_app_id {
    int64_t cluster_ts;
    int32_t id;
} yarn_app_id;

/* appattempt_<ts>_<app %04d>_<attempt %06d> */
typedef struct yarn_attempt_id {
    yarn_app_id app;
    int32_t attempt;
} yarn_attempt_id;

/* container_[e<epoch>_]<ts>_<app %04d>_<attempt %02d>_<seq %06d>; id holds
 * (epoch << 40) | seq as on the wire. */
typedef struct yarn_container_id {
    yarn_attempt_id attempt;
    int64_t id;
} yarn_container_id;

#define YARN_ID_MAX 96 /* room for any formatted id */

int yarn_app_id_parse(const char *s, yarn_app_id *out, tony_error *err);
int yarn_attempt_id_parse(const char *s, yarn_attempt_id *out, tony_error *err);
int yarn_container_id_parse(const char *s, yarn_container_id *out, tony_error *err);
/* Format into buf (at least YARN_ID_MAX bytes); return buf. */
char *yarn_app_id_format(const yarn_app_id *a, char *buf, size_t n);
char *yarn_attempt_id_format(const yarn_attempt_id *a, char *buf, size_t n);
char *yarn_container_id_format(const yarn_container_id *c, char *buf, size_t n);

/* protobuf <-> plain. The protobuf types come from the generated headers; a
 * built message points into `store`, which must outlive it. */
struct Hadoop__Yarn__ContainerIdProto;
typedef struct yarn_container_id_pb yarn_container_id_pb;
void yarn_container_id_from_pb(const struct Hadoop__Yarn__ContainerIdProto *pb, yarn_container_id *out);
struct Hadoop__Yarn__ContainerIdProto *yarn_container_id_to_pb(const yarn_container_id *c, yarn_container_id_pb *store);

#endif
