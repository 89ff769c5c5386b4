/* Leveled logging to stderr. Under MPI every line carries "[rank r/n]" once zaya_log_set_rank() ran.
 * The level comes from ZAYA_LOG_LEVEL (error|warn|info|debug) or zaya_log_set_level(). */
#ifndef ZAYA_LOG_H
#define ZAYA_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zaya_log_level { ZAYA_LOG_ERROR, ZAYA_LOG_WARN, ZAYA_LOG_INFO, ZAYA_LOG_DEBUG } zaya_log_level;

void zaya_log_set_level(zaya_log_level level);
zaya_log_level zaya_log_get_level(void);
void zaya_log_set_rank(int rank, int world_size);
void zaya_log(zaya_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ZAYA_ERROR(...) zaya_log(ZAYA_LOG_ERROR, __VA_ARGS__)
#define ZAYA_WARN(...) zaya_log(ZAYA_LOG_WARN, __VA_ARGS__)
#define ZAYA_INFO(...) zaya_log(ZAYA_LOG_INFO, __VA_ARGS__)
#define ZAYA_DEBUG(...) zaya_log(ZAYA_LOG_DEBUG, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif
