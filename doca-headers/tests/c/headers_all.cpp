/*
 * Every soft SDK header compiled as C++17; see headers_all.h. With HEADERS_ALL_IN_EXTERN_C the
 * headers are included inside an extern "C" block, as some C++ programs do.
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef HEADERS_ALL_IN_EXTERN_C
extern "C" {
#endif
#include "headers_all.h"
#ifdef HEADERS_ALL_IN_EXTERN_C
}
#endif

size_t headers_all_cpp();

size_t headers_all_cpp()
{
	return headers_all_check();
}
