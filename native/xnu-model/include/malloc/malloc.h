// XNU model: <malloc/malloc.h>. malloc_zone_pressure_relief(zone, goal)
// (malloc(3) zones): asks the allocator to give free memory back, NULL for
// every zone; returns the bytes released. Modelled by glibc malloc_trim(0),
// which says only whether it released anything: 1 byte stands for "some".
#ifndef XNU_MODEL_MALLOC_MALLOC_H_
#define XNU_MODEL_MALLOC_MALLOC_H_
#include <stddef.h>
typedef struct _malloc_zone_t malloc_zone_t;
#ifdef __cplusplus
extern "C" {
#endif
size_t malloc_zone_pressure_relief(malloc_zone_t* zone, size_t goal);
#ifdef __cplusplus
}
#endif
#endif  // XNU_MODEL_MALLOC_MALLOC_H_
