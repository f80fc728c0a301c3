/* A careful reader of Avro object container files (the format of TonY's
 * .jhist history): the writer's schema from the file's header drives the
 * decoding, and every length, count and index read is checked against the
 * bytes that are there, and what a file can make it hold is bounded by the
 * file's size (values that take no bytes, such as nulls, are few per file).
 * avro-c's own reader trusts them (a corrupt file makes it allocate
 * exabytes, leak, or hand back wild pointers), and the history portal reads
 * whatever files it finds. */
#ifndef TONY_AVROREAD_H
#define TONY_AVROREAD_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

/* Decodes data (a whole container file, null codec) into *records, a JSON
 * array with one value per record: records as objects, unions as their
 * value, enums as their symbol, bytes and strings as (UTF-8 cleaned)
 * strings. A last block cut short (a writer still at work) ends the read
 * without error. On damage: -1, err saying what and at which byte, and
 * *records holding the records before it (never NULL; the caller frees). */
int tony_avro_decode(const void *data, size_t len, json_t **records, tony_error *err);

#endif
