// XNU model: <sys/stat.h>. darwin's struct stat names its times
// st_atimespec/st_mtimespec/st_ctimespec (stat(2)); the model's are linux's,
// under darwin's names.
#ifndef XNU_MODEL_SYS_STAT_H_
#define XNU_MODEL_SYS_STAT_H_
#include_next <sys/stat.h>
#define st_atimespec st_atim
#define st_mtimespec st_mtim
#define st_ctimespec st_ctim
#endif  // XNU_MODEL_SYS_STAT_H_
