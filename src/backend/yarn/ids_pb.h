/* Storage for a ContainerIdProto built from a yarn_container_id (ids.h);
 * only the YARN wire modules include this, since it needs protobuf-c. */
#ifndef TONY_YARN_IDS_PB_H
#define TONY_YARN_IDS_PB_H

#include "backend/yarn/ids.h"
#include "yarn_am.pb-c.h"

struct yarn_container_id_pb {
    Hadoop__Yarn__ContainerIdProto cid;
    Hadoop__Yarn__ApplicationAttemptIdProto attempt;
    Hadoop__Yarn__ApplicationIdProto app, app_legacy;
};

#endif
