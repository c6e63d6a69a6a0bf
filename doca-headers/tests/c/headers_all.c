/* Every soft SDK header compiled as C (gnu11); see headers_all.h. */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "headers_all.h"

size_t headers_all_c(void);

size_t headers_all_c(void)
{
	return headers_all_check();
}
