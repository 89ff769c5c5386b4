# Public headers: all of include/zaya/*.h (globbed when CMake configures, so a new header is covered
# without editing this file) in one translation unit, compiled as C and as C++, and each one with an
# extern "C" block. C++ is enabled for this test only; the library stays C.
enable_language(CXX)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_CXX_FLAGS_RELEASE "-O3 -DNDEBUG")
set(CMAKE_CXX_FLAGS_DEBUG "-O0 -g")
set(CMAKE_CXX_FLAGS_SANITIZE "${CMAKE_C_FLAGS_SANITIZE}")

file(GLOB ZAYA_PUBLIC_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/zaya/*.h)
list(SORT ZAYA_PUBLIC_HEADERS)
list(LENGTH ZAYA_PUBLIC_HEADERS ZAYA_PUBLIC_HEADER_COUNT)
set(ZAYA_PUBLIC_INCLUDES "")
foreach(h ${ZAYA_PUBLIC_HEADERS})
  get_filename_component(hname ${h} NAME)
  string(APPEND ZAYA_PUBLIC_INCLUDES "#include \"zaya/${hname}\"\n")
endforeach()
configure_file(public_headers.c.in ${CMAKE_CURRENT_BINARY_DIR}/public_headers.c @ONLY)
configure_file(public_headers.c.in ${CMAKE_CURRENT_BINARY_DIR}/public_headers.cpp @ONLY)

add_executable(public_headers_c ${CMAKE_CURRENT_BINARY_DIR}/public_headers.c)
target_link_libraries(public_headers_c PRIVATE zaya_lib)
add_executable(public_headers_cxx ${CMAKE_CURRENT_BINARY_DIR}/public_headers.cpp)
target_link_libraries(public_headers_cxx PRIVATE zaya_lib)
foreach(t public_headers_c public_headers_cxx)
  add_test(NAME ${t} COMMAND ${t})
  set_tests_properties(${t} PROPERTIES LABELS unit TIMEOUT 60)
endforeach()
add_test(NAME public_headers_guard COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/public_headers_guard.sh ${PROJECT_SOURCE_DIR}/include)
set_tests_properties(public_headers_guard PROPERTIES LABELS unit TIMEOUT 60)
# ... and each header alone, twice (its guard), under -std=c17 -pedantic -Werror without the build's
# -D_GNU_SOURCE: no public header needs a feature-test macro or another header from its includer.
add_test(NAME public_headers_alone COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/headers_alone.sh ${CMAKE_C_COMPILER}
         ${PROJECT_SOURCE_DIR}/include)
set_tests_properties(public_headers_alone PROPERTIES LABELS unit TIMEOUT 120)
# Every zaya_X_init of a public header has its release (zaya_X_free, or the one named in the test's
# table), or owns nothing, which the test checks in its definition.
add_test(NAME init_free COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/init_free.py ${PROJECT_SOURCE_DIR})
set_tests_properties(init_free PROPERTIES LABELS unit TIMEOUT 60)
