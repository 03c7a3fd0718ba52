{
  "targets": [
    {
      "target_name": "runwarden",
      "sources": ["native/addon.cc", "native/runfiles_js.cc", "native/reserve.cc", "native/scan.cc", "native/errno_name.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_DISABLE_CPP_EXCEPTIONS"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "cflags_cc": ["-O2", "-Wall", "-Wextra", "-std=c++17"],
      "xcode_settings": {
        "GCC_OPTIMIZATION_LEVEL": "2",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
        "MACOSX_DEPLOYMENT_TARGET": "11.0"
      },
      "conditions": [
        ["OS!='win'", { "sources": ["native/probe.cc", "native/dirfd.cc", "native/runfiles.cc", "native/identity.cc", "native/notify.cc", "native/process_posix.cc"] }],
        ["OS=='linux'", { "sources": ["native/fs_linux.cc", "native/notify_linux.cc"] }],
        ["OS=='mac'", { "sources": ["native/fs_darwin.cc", "native/notify_darwin.cc"] }],
        ["OS=='win'", { "sources": ["native/fs_win.cc", "native/win/win.cc", "native/win/probe.cc", "native/win/dirfd.cc", "native/win/runfiles.cc", "native/win/identity.cc", "native/win/notify.cc"], "libraries": ["ntdll.lib"] }],
        ["OS!='linux' and OS!='mac' and OS!='win'", { "sources": ["native/fs_other.cc", "native/notify_other.cc"] }]
      ]
    }
  ]
}
