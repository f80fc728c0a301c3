/* Resource conversions shared by the YARN wire modules (amrm.c, nm.c);
 * needs protobuf-c, so only they include it. */
#ifndef TONY_YARN_AMRM_PB_H
#define TONY_YARN_AMRM_PB_H

#include "backend/yarn/amrm.h"
#include "yarn_am.pb-c.h"

/* Storage for a ResourceProto built from a yarn_resource. */
typedef struct yarn_resource_pb {
    Hadoop__Yarn__ResourceProto res;
    Hadoop__Yarn__ResourceInformationProto gpu;
    Hadoop__Yarn__ResourceInformationProto *map[1];
} yarn_resource_pb;

void yarn_resource_from_pb(const Hadoop__Yarn__ResourceProto *pb, yarn_resource *out);
Hadoop__Yarn__ResourceProto *yarn_resource_to_pb(const yarn_resource *r, yarn_resource_pb *store);

/* What the AM takes from the ResourceManager's replies (amrm.c's calls use
 * them; tests/fuzz/fuzz_ipc.c feeds them decoded wire bytes): the NM tokens
 * are kept in am, the rest goes to out (fields the caller frees). */
void yarn_amrm_take_register(yarn_amrm *am, const Hadoop__Yarn__RegisterApplicationMasterResponseProto *r,
                             yarn_register_info *out);
/* Also: the response id, a rolled-over AMRMToken, the asks met. */
void yarn_amrm_take_allocate(yarn_amrm *am, const Hadoop__Yarn__AllocateResponseProto *r, yarn_allocation *out);

#endif
